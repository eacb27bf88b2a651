"""The classroom grader's pipeline, from `grade` to the gradebook, and the Gradescope zip."""
