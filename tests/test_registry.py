"""`engine.registry.Registry`, the one idiom of everything found by name: the ways to register, the
checks, the reading (names, get with its one-line error, the mapping), removal and discovery.
Nothing is compiled."""

import pytest

from engine.registry import Registry


class Oops(ValueError):
    pass


def test_the_three_ways_to_register():
    things = Registry("thing", error=Oops)

    @things.register  # named by its ``name``
    class Named:
        name = "named"

    @things.register("called")  # named in the decorator
    def whatever():
        pass

    @things.register  # a function without a name attribute: its __name__
    def plain():
        pass

    class Value:
        def __init__(self, name):
            self.name = name

    v = things.register(Value("value"))  # a value: the same call
    assert things.names() == ("named", "called", "plain", "value")
    assert things.get("named") is Named and things["called"] is whatever and things.get("value") is v
    assert "plain" in things and "nope" not in things and len(things) == 4 and list(things) == list(things.names())
    assert dict(things.items())["plain"] is plain


def test_a_name_is_an_identifier_registered_once():
    things = Registry("thing", error=Oops)
    things.register("a")(len)
    with pytest.raises(Oops, match=r"^thing 'a' is registered already \(builtins\.len\)$"):
        things.register("a")(max)
    with pytest.raises(Oops, match="thing 'not a name': a name must be an identifier"):
        things.register("not a name")(max)
    assert things.names() == ("a",)


def test_an_unknown_name_is_one_line_naming_the_known_ones():
    things = Registry("rules variant", error=Oops)
    things.register("b")(len)
    things.register("a")(max)
    with pytest.raises(Oops, match=r"^unknown rules variant 'c' \(known: b, a\)$"):
        things.get("c")
    assert things.get("c", None) is None  # with a default: the mapping's get
    with pytest.raises(KeyError):
        things["c"]


def test_the_kind_checks_and_keeps_what_it_is_given():
    seen = []

    def entry(name, thing):
        if not callable(thing):
            raise Oops(f"{name}: not callable")
        return (name, thing)

    things = Registry("thing", error=Oops, entry=entry, changed=lambda: seen.append(len(things)),
                      order=lambda name, kept: name)
    assert things.register("z")(len) is len  # the decorator returns the thing, the registry keeps the entry
    things.register("m")(max)
    assert things["z"] == ("z", len) and things.names() == ("m", "z") and seen == [1, 2]
    with pytest.raises(Oops, match="y: not callable"):
        things.register("y")(3)
    assert things.remove("z") == ("z", len) and things.names() == ("m",) and seen == [1, 2, 1]
    with pytest.raises(Oops, match="no thing 'z' is registered"):
        things.remove("z")


def test_discovery_imports_a_packages_public_modules(tmp_path, monkeypatch):
    package = tmp_path / "kinds_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from engine.registry import Registry\nKINDS = Registry('kind')\n")
    (package / "one.py").write_text("from . import KINDS\n@KINDS.register\ndef one():\n    pass\n")
    (package / "_private.py").write_text("from . import KINDS\n@KINDS.register\ndef hidden():\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import kinds_pkg

    kinds_pkg.KINDS.discover("kinds_pkg")
    assert kinds_pkg.KINDS.names() == ("one",)
