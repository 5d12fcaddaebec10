"""Validating a pack: findings with stable codes, and the profile rules of --strict."""
