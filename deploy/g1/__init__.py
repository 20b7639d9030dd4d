"""The Unitree G1 over DDS: the virtual robot (`virtual_robot`, on `sim_robot`), the deploy
node (`node`) with its safety state machine (`safety`) and observation (`observation`),
the links it reaches a robot through (`links`: the G1's own low-level topics, or ROS 2
topics over CycloneDDS; `rclpy_node`: the same node through rclpy; `ros2_state`: the ROS 2
message conversions they share), LowState_/LowCmd_ conversions (`messages`), the
calibration overlay (`overlay`, re-exported from `simreal.robots.g1.overlay`) and the
deadline clock both loops run on (`clock`)."""

from simreal.deploy.g1.safety import Mode, SafetyConfig, StateMachine
from simreal.robots.g1.overlay import Overlay, OverlayError, load_overlay

__all__ = ["Mode", "Overlay", "OverlayError", "SafetyConfig", "StateMachine", "load_overlay"]
