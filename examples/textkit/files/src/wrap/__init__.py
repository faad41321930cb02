"""Word wrapping: wrap.lines breaks text into lines of at most a given width."""
