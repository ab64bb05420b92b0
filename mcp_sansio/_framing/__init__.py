"""Framing layers: turn a byte stream into whole messages and back."""
