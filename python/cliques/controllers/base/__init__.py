"""What every controller and every gang feature shares: the plan's actions, conditions,
refused writes, the executor (the only writer), the plan runner, what a controller is
wired with, template hashes, start order, the bounds of a CliqueSet and the bodies of the
objects the controllers create. Imports no feature and no controller package."""
