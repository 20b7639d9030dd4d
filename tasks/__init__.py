"""Tasks: typed configs plus pure observation and reward terms, over robots and engines."""

from simreal.tasks.env import StepResult, TaskEnv
from simreal.tasks.registry import TASKS, TaskSpec, get_task, make_env

__all__ = ["TASKS", "StepResult", "TaskEnv", "TaskSpec", "get_task", "make_env"]
