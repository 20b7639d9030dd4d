"""Robot descriptions: one sub-package per robot, knowing nothing of tasks.

Each robot owns its facts (masses, joint order, limits, actuator parameters) and
builds its own MuJoCo model from them, so training, export and deploy read one source.
"""
