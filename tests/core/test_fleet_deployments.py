"""A deployment's group row from its members' rows, and the profile's [deployment] table."""

from __future__ import annotations

from tui.core.config import DeploymentConfig, profile_from_data
from tui.fleet.deployments import grouped, head_host
from tui.fleet.model import FleetRow
from tui.fleet.view import host_state

HEAD = FleetRow(
    host="node0",
    reachable=True,
    unit_state="active",
    phase="serving",
    health_ok=True,
    running=3,
    waiting=1,
    gen_tok_s=120.0,
    gpu_count=8,
    deployment="kimi",
)
RANKS = FleetRow(host="node1", reachable=True, unit_state="active", gpu_count=8, headless=True)
RANKS = FleetRow(**{**RANKS.__dict__, "deployment": "kimi"})
ALONE = FleetRow(host="glm", reachable=True, unit_state="active", phase="serving", health_ok=True)


def test_the_profile_names_its_deployment_and_a_headless_host_needs_the_name() -> None:
    profile, problems = profile_from_data(
        {"deployment": {"name": "kimi", "headless": True}}, "node1", None
    )
    assert problems == [] and profile.deployment == DeploymentConfig("kimi", True)
    _, problems = profile_from_data({"deployment": {"headless": True}}, "node1", None)
    assert problems == [
        "deployment.headless: a headless host belongs to a deployment: give its name"
    ]
    _, problems = profile_from_data({"deployment": {"name": "kimi k2"}}, "node1", None)
    assert problems[0].startswith("deployment.name: expected a name of letters")


def test_the_group_row_counts_every_host_and_serves_from_the_head() -> None:
    shown = grouped([ALONE, RANKS, HEAD], [ALONE, RANKS, HEAD])
    assert [r.host for r in shown] == ["glm", "deployment:kimi", "node1", "node0"]
    group = shown[1]
    assert (group.gpu_count, group.running, group.waiting, group.gen_tok_s) == (16, 3, 1, 120.0)
    assert host_state(group) == "serving" and group.members == ("node1", "node0")
    assert head_host(shown, "deployment:kimi") == "node0" and head_host(shown, "glm") is None


def test_a_headless_host_whose_unit_stopped_degrades_the_deployment() -> None:
    stopped = FleetRow(**{**RANKS.__dict__, "unit_state": "inactive"})
    group = grouped([HEAD, stopped], [HEAD, stopped])[0]
    assert host_state(group) == "degraded"
    assert group.members_down == ("node1 stopped",)
    assert group.alerts[0] == "degraded: node1 stopped"
    # Filtered to the head alone, the group still judges by every member.
    assert grouped([HEAD], [HEAD, stopped])[0].members_down == ("node1 stopped",)


def test_a_member_whose_figures_are_unknown_makes_the_totals_unknown() -> None:
    """Its GPUs not read (a slow or lost host): the deployment's count is unknown, not the
    other members' 8 shown as the deployment's."""
    unread = FleetRow(**{**RANKS.__dict__, "gpu_count": None, "power_w": None})
    head = FleetRow(**{**HEAD.__dict__, "power_w": 700.0})
    group = grouped([head, unread], [head, unread])[0]
    assert group.gpu_count is None and group.power_w is None
    assert (group.running, group.gen_tok_s) == (3, 120.0)  # the head's own figures are known
    read = FleetRow(**{**unread.__dict__, "gpu_count": 8, "power_w": 650.0})
    group = grouped([head, read], [head, read])[0]
    assert (group.gpu_count, group.power_w) == (16, 1350.0)
