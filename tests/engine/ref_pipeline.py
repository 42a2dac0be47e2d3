"""The outline -> write -> polish pipeline as Python code, for runs that load it by reference
(``agent_ref="tests.engine.ref_pipeline:pipeline"``): its state keys live only in the agents."""

from studio.engine.hosting.build import spec_agent
from tests.helpers import pipeline_spec

pipeline = spec_agent(pipeline_spec())
