"""What a page says about a selected program: the program found from a selection that lost its
indentation, the prose and formula introducing it, and the section working out what it computes,
matched in order."""

from __future__ import annotations

from bookwise.generation.code_context import (
    explaining_section,
    is_program,
    selected_program,
    working_passages,
)
from bookwise.generation.study import explain_code_answer
from conftest import SectionFactory

DRIVER = (
    "The driver node converts each command into wheel speeds, clipping them as described above:\n\n"
    "Python:\n\n"
    '```python title="diff_drive.py"\n'
    "def wheel_speeds(v, omega, track=0.30, radius=0.05, max_wheel=0.5):\n"
    '    """Body velocity (m/s, rad/s) to wheel speeds (rad/s), returned as (left, right)."""\n'
    "    v_l = v - omega * track / 2\n"
    "    v_r = v + omega * track / 2\n"
    "    return v_l / radius, v_r / radius\n"
    "```"
)
FORWARD = (
    "Each wheel's rim moves at `v_l = r·φ_l` and `v_r = r·φ_r`. The robot's forward speed is their "
    "average:\n\n```text\nv = (v_r + v_l) / 2\nω = (v_r − v_l) / b\n```"
)
INVERSE = (
    "A planner thinks in `v` and `ω`, so the motor driver needs the inverse:\n\n"
    "```text\nv_l = v − ω·b / 2        φ_l = v_l / r\nv_r = v + ω·b / 2        φ_r = v_r / r\n```\n\n"
    "If one wheel would exceed its top speed, scale **both** wheel speeds by the same factor."
)
# As a reader's selection arrives: the indentation gone.
SELECTED = "v_l = v - omega * track / 2\nv_r = v + omega * track / 2"


def test_a_selection_without_its_indentation_is_found_in_its_program(section: SectionFactory) -> None:
    driver = section("Reading the cmd_vel topic", DRIVER)
    program = selected_program(SELECTED, driver)
    assert program is not None
    assert program.code.startswith("def wheel_speeds(")
    # The tab's label ("Python:") is skipped; the sentence before it introduces the program.
    assert program.introduction == (
        "The driver node converts each command into wheel speeds, clipping them as described above:"
    )


def test_a_later_tabs_program_had_no_introduction_regression(section: SectionFactory) -> None:
    # The C++ tab's program followed the Python tab's, so nothing in words came right before it.
    cpp = (
        'C++:\n\n```cpp title="diff_drive.cpp"\n'
        "std::pair<double, double> wheelSpeeds(double v, double omega) {\n"
        "  const double vl = v - omega * track / 2.0;\n  return {vl, vl};\n}\n```"
    )
    driver = section("Reading the cmd_vel topic", f"{DRIVER}\n\n{cpp}")
    program = selected_program("const double vl = v - omega * track / 2.0;\nreturn {vl, vl};", driver)
    assert program is not None and program.code.startswith("std::pair")
    assert program.introduction == (
        "The driver node converts each command into wheel speeds, clipping them as described above:"
    )


def test_prose_and_formulas_are_no_selected_program(section: SectionFactory) -> None:
    assert (
        selected_program("The driver node converts each command into wheel speeds", section("D", DRIVER))
        is None
    )
    assert selected_program("v = (v_r + v_l) / 2", section("Forward", FORWARD)) is None  # a ```text formula
    assert selected_program("v_l", section("D", DRIVER)) is None  # too short to tell apart
    assert is_program("```cpp title=x.cpp") and not is_program("```text") and not is_program("```")


def test_a_formula_right_before_the_program_introduces_it_with_its_sentence(section: SectionFactory) -> None:
    odometry = section(
        "The wheel odometry model",
        "Odometry adds up the motion.\n\nEach cycle, update the pose from the middle heading:\n\n"
        "```text\nΔs = (Δs_r + Δs_l) / 2\n```\n\n```python\ndef update_pose(pose, ds_l, ds_r):\n"
        "    ds = (ds_r + ds_l) / 2\n    return ds\n```",
    )
    program = selected_program("ds = (ds_r + ds_l) / 2\nreturn ds", odometry)
    assert program is not None
    assert program.introduction == (
        "Each cycle, update the pose from the middle heading:\n\n```text\nΔs = (Δs_r + Δs_l) / 2\n```"
    )


def test_explain_on_code_pointed_to_the_section_computing_the_other_direction_regression(
    section: SectionFactory,
) -> None:
    """Both kinematics headings hold "wheel speeds" and "body velocity"; the program's docstring says
    "Body velocity … to wheel speeds", which is the inverse section's heading in order."""
    driver = section("Reading the cmd_vel topic", DRIVER, n=3)
    forward = section("From wheel speeds to body velocity", FORWARD, n=1)
    inverse = section("From body velocity to wheel speeds", INVERSE, n=2)
    program = selected_program(SELECTED, driver)
    assert program is not None
    page = [(1, forward), (2, inverse), (3, driver)]
    assert explaining_section(program, page, own=driver.section_id) == (2, inverse)
    assert explaining_section(program, [(1, forward), (3, driver)], own=driver.section_id) == (1, forward)


def test_a_heading_sharing_only_letters_with_the_code_does_not_explain_it(section: SectionFactory) -> None:
    """`q` and `r` in a filter's code are not "Choosing Q and R"."""
    code = section("Worked example", "```python\ndef step(x, p, q, r):\n    return x + q, p + r\n```")
    program = selected_program("def step(x, p, q, r):\n  return x + q, p + r", code)
    assert program is not None
    tuning = section("Choosing Q and R", "`Q` and `R` are the filter's only tuning knobs.", n=2)
    assert explaining_section(program, [(2, tuning)], own=code.section_id) is None


def test_the_functions_a_program_defines_in_order_match_a_heading(section: SectionFactory) -> None:
    code = section(
        "Worked example",
        "```python\ndef predict(x, u):\n    return x + u\n\n\n"
        "def correct(x, z, k):\n    return x + k * (z - x)\n```",
    )
    program = selected_program("def correct(x, z, k):\n return x + k * (z - x)", code)
    assert program is not None
    insight = section("Kálmán's insight: predict, then correct", "The filter loops over two steps.", n=2)
    assert explaining_section(program, [(2, insight)], own=code.section_id) == (2, insight)


def test_the_working_quotes_the_formula_and_the_case_after_it_once(section: SectionFactory) -> None:
    inverse = section("From body velocity to wheel speeds", INVERSE)
    passages = working_passages(inverse)
    assert [("```text" in p.text, "scale **both**" in p.text) for p in passages] == [
        (True, False),
        (False, True),
    ]
    tuning = section(
        "Choosing Q and R",
        "`Q` and `R` are the knobs.\n\n| Setting | Effect |\n| --- | --- |\n| `Q` too small | lags |",
    )
    quoted = [p.text for p in working_passages(tuning)]
    assert len(quoted) == 1 and quoted[0].count("are the knobs") == 1  # not the sentence, then it again


def test_explain_code_answer_quotes_the_introduction_and_the_working(section: SectionFactory) -> None:
    driver = section("Reading the cmd_vel topic", DRIVER, n=3)
    inverse = section("From body velocity to wheel speeds", INVERSE, n=2)
    program = selected_program(SELECTED, driver)
    assert program is not None
    text = explain_code_answer(program, (2, inverse, working_passages(inverse)))
    assert text is not None
    assert (
        "> The driver node converts each command into wheel speeds, clipping them as described above: [1]"
        in text
    )
    assert "**The page works it through in** [From body velocity to wheel speeds](/p2#" in text
    assert "> v_l = v − ω·b / 2" in text and "by the same factor. [2]" in text
    assert "v_l = v - omega" not in text  # the reader's own selection is not repeated back
    bare = selected_program(
        "x = compute(a, b)\ny = x * 2", section("Code", "```python\nx = compute(a, b)\ny = x * 2\n```")
    )
    assert bare is not None and explain_code_answer(bare, None) is None
