"""Greedy word wrapping. Words are the text's whitespace-separated runs; each line holds as
many words as fit in `width` characters, joined by single spaces. A word longer than
`width` starts a line of its own and is cut into pieces of `width` characters."""


def wrap(text: str, width: int) -> list[str]:
    if width < 1:
        raise ValueError(f"width must be at least 1, not {width}")
    lines: list[str] = []
    current = ""
    for word in text.split():
        while len(word) > width:
            if current:
                lines.append(current)
                current = ""
            lines.append(word[:width])
            word = word[width:]
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width:
            current += " " + word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def fill(text: str, width: int) -> str:
    return "\n".join(wrap(text, width))
