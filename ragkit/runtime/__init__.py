"""What every part of ragkit uses while it runs: optional packages (extras), progress bars and the stage timer."""
