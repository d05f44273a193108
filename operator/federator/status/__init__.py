"""Status: metav1 conditions and the kstatus triad (Ready, Reconciling, Stalled)."""
