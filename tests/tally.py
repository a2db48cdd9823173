"""The pass/fail tally every Python test runner here prints: one line per
check ("ok - NAME" or "FAIL - NAME: detail"), then "N passed, N failed".
"""
passed = 0
failed = 0


def check(ok, name, detail=""):
    """Counts and prints one check; returns ok."""
    global passed, failed
    if ok:
        passed += 1
        print(f"ok - {name}", flush=True)
    else:
        failed += 1
        print(f"FAIL - {name}: {str(detail)[-4000:]}", flush=True)
    return ok


def note(text):
    print(f"# {text}", flush=True)


def summary():
    """Prints the closing line; the exit status (1 if any failed)."""
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0
