"""The HTTPS management plane: ARM and ATOM for Service Bus entities, and Azure DNS record sets."""
