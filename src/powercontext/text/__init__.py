"""Text rules shared by search, assembly and receipts."""
