"""The demo programs: ``vsf_demo`` (simulator + sensor node) and ``vsf_replay`` (a real Punyo poke)."""
