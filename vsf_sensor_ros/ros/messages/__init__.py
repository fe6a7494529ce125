"""The node's message formats: point clouds, contacts, one codec per reading kind, CDR bytes."""
