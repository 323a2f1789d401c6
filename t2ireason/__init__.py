"""t2ireason: reasoning-driven text-to-image evaluation for the Hugging Face ecosystem."""

__version__ = "0.1.0"
