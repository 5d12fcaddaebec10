"""Shipping a pack: reproducible ZIP packages, ed25519 signatures and verification."""
