"""How an exercise calls the learner's function: invokes, the method checks, precision."""
