"""FailoverGroups: probing members, deciding a switch, publishing endpoints (ConfigMap, Azure DNS)."""
