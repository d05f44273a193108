"""A directory Spark's Python workers find on their path (``spark_settings.PLANNER_SITE``), not imported as a
package: Python runs its ``sitecustomize`` at each such process's start. A package here only so that the
import contract sees what that module imports."""
