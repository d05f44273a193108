"""Apply: make the cluster hold what the plan says. The only place children are written."""
