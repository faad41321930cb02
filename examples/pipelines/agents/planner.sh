#!/bin/sh
# Planner agent: reads the envelope (canonical JSON on stdin) and answers a plan on stdout.
# A real planner would call a model here; this one reports one LLM call per plan.
input=$(cat)
iteration=$(printf '%s' "$input" | grep -o '"iteration":[0-9]*' | head -n 1 | cut -d: -f2)
printf '{"output":{"plan":"plan for attempt %s","steps":3},"llm_calls":1}\n' "${iteration:-0}"
