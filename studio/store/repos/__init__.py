"""One repository per aggregate of the studio database, all over one shared :class:`Database`.

:class:`studio.store.Store` is the facade the rest of the studio calls; a module that needs
only one aggregate may take that repository (``store.trials_repo``) instead.
"""

from studio.store.repos.base import Database, Repository
from studio.store.repos.candidates import CandidateRepository
from studio.store.repos.checkpoints import CheckpointRepository
from studio.store.repos.eval_runs import EvalRun, EvalRunRepository
from studio.store.repos.events import EventRepository
from studio.store.repos.examples import ExampleRepository
from studio.store.repos.overrides import OverridePair, OverrideRepository
from studio.store.repos.projects import ProjectRepository
from studio.store.repos.proposals import ProposalRepository
from studio.store.repos.queue_workers import QueueRepository
from studio.store.repos.runs_and_leases import RunRepository
from studio.store.repos.scores import ScoreRepository
from studio.store.repos.team import TeamRepository
from studio.store.repos.trials import TrialRepository

__all__ = ["CandidateRepository", "CheckpointRepository", "Database", "EvalRun",
           "EvalRunRepository", "EventRepository", "ExampleRepository", "OverridePair",
           "OverrideRepository", "ProjectRepository", "ProposalRepository", "QueueRepository",
           "Repository", "RunRepository", "ScoreRepository", "TeamRepository", "TrialRepository"]
