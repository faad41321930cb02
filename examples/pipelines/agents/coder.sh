#!/bin/sh
# Coder agent: answers a patch for the current attempt (two LLM calls' worth of work).
input=$(cat)
iteration=$(printf '%s' "$input" | grep -o '"iteration":[0-9]*' | head -n 1 | cut -d: -f2)
printf '{"output":{"patch":"diff for attempt %s"},"llm_calls":2}\n' "${iteration:-0}"
