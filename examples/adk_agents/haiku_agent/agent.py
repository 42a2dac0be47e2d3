"""A haiku writer laid out as ADK's samples lay out an agent: its instruction a constant in
prompt.py, a function tool in tools.py, a Gemini model.

Run it offline on the studio's scripted model, with no edit:

    studio run examples/adk_agents/haiku_agent --model scripted/demo \
        --evalset examples/adk_agents/haiku_agent/haiku.evalset.json
"""

from google.adk.agents import LlmAgent

from . import prompt
from .tools import count_syllables

MODEL = "gemini-2.5-flash"


root_agent = LlmAgent(
    name="haiku_writer",
    model=MODEL,
    description="Writes a haiku about the topic it is given.",
    instruction=prompt.WRITER_PROMPT,
    tools=[count_syllables],
)
