#!/usr/bin/env bash
# The dashboard in a real terminal: run `torchtop demo` under tmux (120x40), wait for the
# verdict, capture the screen, check it names the DataLoader bottleneck and its num_workers fix,
# then quit with `q`.
#
#   scripts/tui_smoke.sh [CAPTURE_FILE]      (default /tmp/torchtop_smoke.txt)
#
# Exit status: 0 when the screen showed the verdict and the fix, 1 when it did not (the capture
# is kept either way), 77 (skipped) when tmux is not installed: this script installs nothing
# (on Debian: apt-get install -y tmux). TORCHTOP_SMOKE_COMMAND replaces the command run
# (default `torchtop demo --for 40`); TORCHTOP_SMOKE_WAIT_S how long to wait for the verdict.
set -u

capture_file="${1:-/tmp/torchtop_smoke.txt}"
command="${TORCHTOP_SMOKE_COMMAND:-torchtop demo --for 40}"
wait_s="${TORCHTOP_SMOKE_WAIT_S:-30}"
quit_wait_s=20

if ! command -v tmux >/dev/null 2>&1; then
    echo "tui_smoke: tmux is not installed (apt-get install -y tmux); skipping" >&2
    exit 77
fi

# A private tmux server (its own socket, no user config), so no one else's sessions are touched.
server="torchtop-smoke-$$"
session="smoke"
tmux_() { tmux -L "$server" -f /dev/null "$@"; }
cleanup() { tmux_ kill-server >/dev/null 2>&1 || true; }
trap cleanup EXIT

tmux_ new-session -d -s "$session" -x 120 -y 40 "$command" \; set-option -w remain-on-exit on
echo "tui_smoke: started \`$command\` in tmux (120x40); waiting up to ${wait_s}s for the verdict"

capture() { tmux_ capture-pane -p -t "$session" > "$capture_file" 2>/dev/null; }
has_verdict() { grep -qE 'DATALOADER|verdict dataloader' "$capture_file"; }
pane_dead() { [ "$(tmux_ display-message -p -t "$session" '#{pane_dead}' 2>/dev/null)" = "1" ]; }

deadline=$((SECONDS + wait_s))
capture
until has_verdict || pane_dead || [ "$SECONDS" -ge "$deadline" ]; do
    sleep 0.5
    capture
done
# One more look a moment later: the fixes list is drawn with the verdict, but not always in
# the same frame.
sleep 1
capture

status=0
if has_verdict; then
    echo "tui_smoke: the verdict is on screen (DATALOADER)"
else
    echo "tui_smoke: FAIL: no DATALOADER verdict after ${wait_s}s" >&2
    status=1
fi
if grep -q 'num_workers' "$capture_file"; then
    echo "tui_smoke: the fix is on screen (num_workers)"
else
    echo "tui_smoke: FAIL: no num_workers fix on screen" >&2
    status=1
fi
echo "tui_smoke: screen saved to $capture_file"

if ! pane_dead; then
    tmux_ send-keys -t "$session" q
    deadline=$((SECONDS + quit_wait_s))
    until pane_dead || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.5; done
    if pane_dead; then
        echo "tui_smoke: q quit the dashboard"
    else
        echo "tui_smoke: FAIL: the dashboard did not quit within ${quit_wait_s}s of q" >&2
        status=1
    fi
fi
exit "$status"
