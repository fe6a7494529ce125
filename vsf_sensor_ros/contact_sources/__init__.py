"""Programs that publish ``contacts``: the Klampt/ODE contact simulator and the wrench contact node."""
