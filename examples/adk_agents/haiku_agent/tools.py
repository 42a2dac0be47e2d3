"""The haiku writer's tool."""


def count_syllables(line: str) -> dict:
    """Counts the syllables of a line, roughly (groups of vowels)."""
    groups, previous = 0, False
    for char in line.lower():
        vowel = char in "aeiouy"
        groups += vowel and not previous
        previous = vowel
    return {"syllables": groups}
