"""microagg_cli: microaggregation for statistical disclosure control."""
__version__ = "0.1.0"
