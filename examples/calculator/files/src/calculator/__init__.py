"""A small calculator: arithmetic (calculator.arithmetic) and a safe expression
evaluator (calculator.parse)."""
