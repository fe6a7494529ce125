"""Programs that publish ``contacts``: the Klampt/ODE contact simulator, the MuJoCo contact node
and its scene, and the wrench contact node."""
