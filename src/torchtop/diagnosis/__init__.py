"""Rule files to a rule tree; metrics to findings and a verdict."""
