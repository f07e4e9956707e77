"""Many boxes on one screen: the fleet's rows, whatever source they come from."""
