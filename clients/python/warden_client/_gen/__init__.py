"""gRPC code generated from proto/ by clients/python/regenerate: do not edit."""
