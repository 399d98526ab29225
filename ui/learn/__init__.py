"""The Learn pages' family: one scenario's two lanes, run and cached (runs), the player in the
page, the words that say what the lanes did, the worked example and the reproduction's table."""
