"""The PreparedContext Builder: selection, budget, truncation, rendering."""
