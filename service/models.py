"""The service app's models live in the kernel (service/kernel/keys.py); Django looks for them here."""

from service.kernel.keys import ApiKey

__all__ = ["ApiKey"]
