"""Tools for ragkit's own tests and fault drills: fault points that a test can arm, and a
child process started and stopped cleanly."""
