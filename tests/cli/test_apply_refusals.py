"""``studio apply`` refuses in one line what it cannot do, before reading any source."""

from __future__ import annotations

from studio.cli import main
from studio.engine import EvolutionConfig, create_run
from tests.helpers import demo_spec, trainset


def test_a_run_whose_agent_is_in_its_project_file_has_no_source_to_write(store, tmp_path,
                                                                        capsys):
    run = create_run(store, spec=demo_spec(), trainset=trainset(2),
                     config=EvolutionConfig(max_iterations=0))
    assert main(["--db", store.url, "apply", run.id]) == 2
    assert (f"run {run.id}'s agent is not an agent folder's code (its project file defines "
            "it): there is no source to write into") in capsys.readouterr().err
    assert main(["--db", store.url, "apply", run.id, "--to", str(tmp_path / "nowhere")]) == 2
    assert "agent folder not found" in capsys.readouterr().err
