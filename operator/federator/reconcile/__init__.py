"""Reconcile: one pass of manifest → validated model → plan → apply → observe → status per kind."""
