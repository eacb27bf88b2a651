"""What the notebook check and the grader share: cases, comparison, mistakes and their hints,
reports."""
