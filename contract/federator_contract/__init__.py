"""The contract the operator, the Spark app and the emulator share: the API models, the Service Bus SQL
language, the task config the operator writes for the app, the Spark settings every app runs with, and
the emulator config local mode writes."""
