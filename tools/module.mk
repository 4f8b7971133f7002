# kvbench and the other tools.
