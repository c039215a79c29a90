#!/usr/bin/env bash
# The action's second step: evaluates every skill a pull request changed against the base's
# version, with the configs found beside it, and gates on the verdicts.
#
# A changed skill is a file added, modified or renamed between the base and HEAD that is a
# SKILL.md, or any Markdown file a config beside it names as its `skill:` (the examples' layout,
# `config.yaml` beside `seed_skill.md`); a change to any other file of a skill folder (the
# folder of a SKILL.md: its references/, scripts/, assets/) is a change of its SKILL.md, and
# the base's SKILL.md is evaluated with its whole folder as it was at the base. Its configs are the files matching SF_CONFIGS in its
# folder and in the folder above whose top-level `skill:` names it; a SKILL.md no config names
# is evaluated with every config in its own folder. Each (skill, config) pair is one
#   skill-factory evaluate -c CONFIG --compare BASE_VERSION SKILL --junit N.xml --markdown N.md
# or, for a skill new in the pull request, `--skill SKILL` alone (then only --fail-under gates).
# Every pair is evaluated before the job fails: exit 1 when any was a regression (exit 1 of
# evaluate) or an error (2: a user error, 3: nothing could be measured, or anything else).
#
# Reads (the action's inputs, through its step's env):
#   SF_BIN         the skill-factory to run (default: `skill-factory` on PATH)
#   SF_BASE        the base commit or branch (github.event.pull_request.base.sha)
#   SF_CONFIGS     the glob of config file names (default: config*.yaml)
#   SF_FAIL_IF     worse | not-better | never (default: worse)
#   SF_FAIL_UNDER  a score under which the head fails, or empty
#   SF_COMMENT     true to post the summary as a pull request comment
#   SF_PR          the pull request's number; GITHUB_TOKEN and GITHUB_REPOSITORY for `gh`
# Writes the combined Markdown to a fresh folder under $RUNNER_TEMP (with each pair's JUnit and
# Markdown files), appends it to $GITHUB_STEP_SUMMARY and writes `summary=` and `reports=` to
# $GITHUB_OUTPUT when those are set. Written for bash 3.2 too (macOS's /bin/bash).
set -euo pipefail

fail() {
  echo "::error title=skill-factory::$1" >&2
  exit 1
}

bin="${SF_BIN:-skill-factory}"
configs="${SF_CONFIGS:-config*.yaml}"
fail_if="${SF_FAIL_IF:-worse}"
fail_under="${SF_FAIL_UNDER:-}"
comment="${SF_COMMENT:-false}"

case "$fail_if" in
worse | not-better | never) ;;
*) fail "fail-if: '$fail_if' is not one of worse, not-better, never" ;;
esac
if [[ -n "$fail_under" && ! "$fail_under" =~ ^[0-9]*\.?[0-9]+$ ]]; then
  fail "fail-under: '$fail_under' is not a score such as 0.8"
fi
[[ "$configs" != */* ]] || fail "configs: '$configs' is a glob of file names, without a folder"
command -v "$bin" >/dev/null 2>&1 || fail "no skill-factory to run: '$bin' is not a command"
[[ -n "${SF_BASE:-}" ]] ||
  fail "no base to compare with: run on a pull_request event, or set base-ref to a commit or branch"

top="$(git rev-parse --show-toplevel 2>/dev/null)" ||
  fail "$PWD is not in a git repository: check the repository out (actions/checkout) before this action"
cd "$top"

# The base as a commit: the name given, the remote's branch of that name, or fetched.
base=""
for candidate in "$SF_BASE" "origin/$SF_BASE"; do
  if git cat-file -e "$candidate^{commit}" 2>/dev/null; then
    base="$(git rev-parse "$candidate^{commit}")"
    break
  fi
done
if [[ -z "$base" ]]; then
  git fetch --quiet --depth=1 origin "$SF_BASE" ||
    fail "the base '$SF_BASE' is neither in the checkout nor fetchable from origin"
  base="$(git rev-parse "FETCH_HEAD^{commit}")"
fi
short="${base:0:12}"

temp="${RUNNER_TEMP:-${TMPDIR:-/tmp}}"
out="$(mktemp -d "$temp/skill-factory-reports.XXXXXX")"
summary="$out/summary.md"

# What the pull request changed: since the merge base when there is one; a shallow checkout of
# GitHub's merge commit has none, and there HEAD against the base is the pull request's change.
if git merge-base "$base" HEAD >/dev/null 2>&1; then
  range=("$base...HEAD")
else
  echo "::notice title=skill-factory::no merge base of $short and HEAD (a shallow checkout?): comparing HEAD with $short directly; check out with fetch-depth: 0 for the pull request's own changes"
  range=("$base" HEAD)
fi
git diff --name-status -z -M --diff-filter=AMRD "${range[@]}" >"$out/changed" ||
  fail "git diff of $short and HEAD failed"
changed_old=()
changed_new=()
# The skill folder a file belongs to: the nearest folder above it that holds a SKILL.md at
# HEAD; empty when none does.
skill_folder_of() {
  local dir="$1"
  while [[ "$dir" == */* ]]; do
    dir="${dir%/*}"
    if [[ -f "$dir/SKILL.md" ]]; then
      echo "$dir"
      return
    fi
  done
}
# Adds a changed skill once, with its path at the base.
add_changed() {
  local i
  for i in ${changed_new[@]+"${!changed_new[@]}"}; do
    if [[ "${changed_new[$i]}" == "$2" ]]; then return; fi
  done
  changed_old+=("$1")
  changed_new+=("$2")
}
while IFS= read -r -d '' status; do
  IFS= read -r -d '' path
  old="$path"
  if [[ "$status" == R* ]]; then IFS= read -r -d '' path; fi
  if [[ "$path" == *.md && "$status" != D ]]; then add_changed "$old" "$path"; fi
  # A file of a skill folder (references/, scripts/, assets/), deleted ones too, changes that
  # skill.
  folder="$(skill_folder_of "$path")"
  if [[ -n "$folder" && "$path" != "$folder/SKILL.md" ]]; then
    add_changed "$folder/SKILL.md" "$folder/SKILL.md"
  fi
done <"$out/changed"

# A path with its `.` and `..` segments resolved, relative to the repository's root.
normalize() {
  local parts part kept=()
  IFS=/ read -r -a parts <<<"$1"
  for part in ${parts[@]+"${parts[@]}"}; do
    case "$part" in
    "" | .) ;;
    ..) if ((${#kept[@]} > 0)); then kept=("${kept[@]:0:${#kept[@]}-1}"); fi ;;
    *) kept+=("$part") ;;
    esac
  done
  local IFS=/
  echo "${kept[*]+"${kept[*]}"}"
}

# A config's top-level `skill:` value, without quotes or a trailing comment; empty without one.
skill_of() {
  local value
  value="$(sed -n 's/^skill:[[:space:]]*//p' "$1" | head -n 1 | tr -d '\r')"
  value="${value%%[[:space:]]#*}"
  value="${value%"${value##*[![:space:]]}"}"
  if [[ "$value" == \"*\" || "$value" == \'*\' ]]; then value="${value:1:${#value}-2}"; fi
  echo "$value"
}

# The configs matching the glob in a folder ("" for the root), as paths from the root.
configs_in() {
  local dir="$1" file
  shopt -s nullglob
  # The glob is the input's, so it is expanded here on purpose.
  # shellcheck disable=SC2206
  local files=("${dir:+$dir/}"$configs)
  shopt -u nullglob
  for file in ${files[@]+"${files[@]}"}; do
    if [[ -f "$file" ]]; then echo "$file"; fi
  done
}

dir_of() {
  case "$1" in
  */*) echo "${1%/*}" ;;
  *) echo "" ;;
  esac
}

# Every (skill, config) pair, in the order of the diff.
pair_skill=()
pair_old=()
pair_config=()
unconfigured=()
for i in ${changed_new[@]+"${!changed_new[@]}"}; do
  path="${changed_new[$i]}"
  dir="$(dir_of "$path")"
  found=()
  folders=("$dir")
  if [[ -n "$dir" ]]; then folders+=("$(dir_of "$dir")"); fi
  for folder in "${folders[@]}"; do
    while IFS= read -r config; do
      skill="$(skill_of "$config")"
      [[ -n "$skill" ]] || continue
      if [[ "$(normalize "$(dir_of "$config")/$skill")" == "$path" ]]; then found+=("$config"); fi
    done < <(configs_in "$folder")
  done
  if ((${#found[@]} == 0)) && [[ "${path##*/}" == SKILL.md ]]; then
    while IFS= read -r config; do found+=("$config"); done < <(configs_in "$dir")
  fi
  if ((${#found[@]} == 0)); then
    if [[ "${path##*/}" == SKILL.md ]]; then unconfigured+=("$path"); fi
    continue
  fi
  for config in "${found[@]}"; do
    pair_skill+=("$path")
    pair_old+=("${changed_old[$i]}")
    pair_config+=("$config")
  done
done

regressions=0
errors=0
rows=""
sections=""
for n in ${pair_skill[@]+"${!pair_skill[@]}"}; do
  skill="${pair_skill[$n]}"
  old="${pair_old[$n]}"
  config="${pair_config[$n]}"
  junit="$out/$n.xml"
  markdown="$out/$n.md"
  log="$out/$n.log"
  args=(evaluate -c "$config" --junit "$junit" --markdown "$markdown")
  if [[ -n "$fail_under" ]]; then args+=(--fail-under "$fail_under"); fi
  base_file=""
  if git cat-file -e "$base:$old" 2>/dev/null; then
    # The base's version under the same path, so the report reads alike on both sides; a
    # SKILL.md with its whole folder as it was at the base (its references, scripts and
    # assets), as the head's is read with its own.
    mkdir -p "$out/base/$n"
    base_file="$out/base/$n/$old"
    if [[ "${old##*/}" == SKILL.md && "$old" == */* ]]; then
      git archive --format=tar "$base" -- "$(dir_of "$old")" | tar -x -C "$out/base/$n" ||
        fail "could not read the folder of $old at $short"
    else
      mkdir -p "$(dirname "$base_file")"
      git show "$base:$old" >"$base_file"
    fi
    args+=(--compare "$base_file" "$skill" --fail-if "$fail_if")
  else
    args+=(--skill "$skill")
  fi
  echo "::group::$skill with $config"
  printf '+ %q' "$bin"
  printf ' %q' "${args[@]}"
  echo
  set +e
  "$bin" "${args[@]}" >"$log" 2>&1
  code=$?
  set -e
  cat "$log"
  echo "::endgroup::"

  text=""
  if [[ -s "$markdown" ]]; then
    text="$(cat "$markdown")"
    # The base's temporary copy is named as git names it: the commit and the path.
    if [[ -n "$base_file" ]]; then text="${text//"$base_file"/"$short:$old"}"; fi
  fi
  verdict="$(printf '%s\n' "$text" | sed -n 's/.*\*\*Verdict: \([^*]*\)\.\*\*.*/\1/p' | head -n 1)"
  if [[ -z "$base_file" ]]; then
    score="$(printf '%s\n' "$text" | sed -n 's/.* scores \*\*\([0-9.]*\) .*/\1/p' | head -n 1)"
    verdict="new skill${score:+, scores $score}"
  fi
  case "$code" in
  0) result="${verdict:-passed}" ;;
  1)
    regressions=$((regressions + 1))
    result="${verdict:-failed} (failed)"
    reason="$(grep -m 1 '^Failed: ' "$log" | sed 's/^Failed: //' || true)"
    echo "::error file=$skill,title=skill regression::$skill with $config: ${reason:-evaluate exited 1}"
    ;;
  *)
    errors=$((errors + 1))
    result="error (exit $code)"
    echo "::error file=$skill,title=skill evaluation error::$skill with $config: evaluate exited $code"
    ;;
  esac
  rows+="| \`$skill\` | \`$config\` | $result |"$'\n'
  section="### \`$skill\` with \`$config\`"$'\n\n'
  if [[ -z "$base_file" ]]; then
    section+="A new skill: there is no \`$old\` at $short to compare with."$'\n\n'
  fi
  if [[ -n "$text" ]]; then
    # Its headings one level under this section's.
    section+="$(printf '%s\n' "$text" | sed 's/^##/####/')"$'\n\n'
  fi
  if ((code > 1)); then
    section+="\`skill-factory evaluate\` exited $code. The end of its output:"$'\n\n'
    section+='```text'$'\n'"$(tail -n 20 "$log")"$'\n''```'$'\n\n'
  fi
  sections+="$section"
done

{
  echo "## Skill Factory: the skills this pull request changed"
  echo
  if ((${#pair_skill[@]} + ${#unconfigured[@]} == 0)); then
    echo "No skill changed since \`$short\`: nothing to evaluate."
  elif ((${#pair_skill[@]} > 0)); then
    echo "Each changed skill against its version at \`$short\` (\`--fail-if $fail_if\`${fail_under:+, \`--fail-under $fail_under\`})."
    echo
    echo "| skill | config | result |"
    echo "| :--- | :--- | :--- |"
    printf '%s' "$rows"
  fi
  echo
  for path in ${unconfigured[@]+"${unconfigured[@]}"}; do
    echo "\`$path\` changed, but no config matching \`$configs\` is beside it: not evaluated."
    echo
  done
  if ((regressions + errors > 0)); then
    echo "**Failed:** $regressions regression(s), $errors error(s)."
    echo
  fi
  printf '%s' "$sections"
} >"$summary"
for path in ${unconfigured[@]+"${unconfigured[@]}"}; do
  echo "::warning file=$path,title=skill not evaluated::no config matching '$configs' beside $path"
done

if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then cat "$summary" >>"$GITHUB_STEP_SUMMARY"; fi
if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
  echo "summary=$summary" >>"$GITHUB_OUTPUT"
  echo "reports=$out" >>"$GITHUB_OUTPUT"
fi

# The comment is a courtesy: a token without write access (a fork's pull request) or a
# missing gh must not fail a job whose skills passed.
if [[ "$comment" == true && -n "${GITHUB_TOKEN:-}" && -n "${SF_PR:-}" ]]; then
  if command -v gh >/dev/null 2>&1; then
    body="$out/comment.md"
    # GitHub refuses a comment over 65,536 characters; whole lines are kept under that.
    awk -v limit=60000 '{ size += length($0) + 1; if (size > limit) { cut = 1; exit } print }
      END { if (cut) print "\n*The summary is cut here; the job'"'"'s summary has all of it.*" }' \
      "$summary" >"$body"
    export GH_TOKEN="$GITHUB_TOKEN"
    if [[ -n "${GITHUB_REPOSITORY:-}" ]]; then export GH_REPO="$GITHUB_REPOSITORY"; fi
    gh pr comment "$SF_PR" --edit-last --body-file "$body" 2>/dev/null ||
      gh pr comment "$SF_PR" --body-file "$body" ||
      echo "::warning title=skill-factory::could not comment on pull request #$SF_PR (does the job have pull-requests: write?)"
  else
    echo "::warning title=skill-factory::gh is not installed: the summary was not posted as a comment"
  fi
fi

cat "$summary"
if ((regressions + errors > 0)); then
  echo "::error title=skill-factory::$regressions regression(s) and $errors error(s) in ${#pair_skill[@]} evaluation(s)" >&2
  exit 1
fi
