"""A job whose cleanup leaves a mark: it touches `ready` beside the path it is given, sleeps,
and on the way out however it is stopped (a KeyboardInterrupt) writes `cleaned up` to that path.
A job ignoring SIGINT, or killed harder, never writes it."""

import sys
import time
from pathlib import Path

done = Path(sys.argv[1])
try:
    done.with_name("ready").touch()
    time.sleep(300)
finally:
    done.write_text("cleaned up")
