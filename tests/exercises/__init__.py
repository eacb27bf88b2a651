"""Every chapter's exercises: right and wrong answers through the notebook check, the declarations,
adding an exercise."""
