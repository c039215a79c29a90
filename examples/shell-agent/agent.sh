#!/bin/sh
# A tiny stand-in for an agent CLI: it turns the title it reads on stdin into a URL slug,
# applying only the rules its skill (the SKILL.md whose path is $1) asks for. A better skill
# gives better slugs, which is what the optimizer has to discover.
#
#   usage: sh agent.sh SKILL.md < title
rules=$(tr '[:upper:]' '[:lower:]' < "$1") || exit 1
asks() {
    case "$rules" in
        *"$1"*) return 0 ;;
        *) return 1 ;;
    esac
}
text=$(cat)
if asks "lower case"; then text=$(printf '%s' "$text" | tr '[:upper:]' '[:lower:]'); fi
if asks "punctuation"; then text=$(printf '%s' "$text" | tr -c 'A-Za-z0-9 ' ' '); fi
if asks "hyphen"; then text=$(printf '%s' "$text" | tr ' ' '-'); fi
if asks "repeated"; then text=$(printf '%s' "$text" | tr -s '-'); fi
if asks "trim"; then text=$(printf '%s' "$text" | sed 's/^-*//; s/-*$//'); fi
printf '%s\n' "$text"
