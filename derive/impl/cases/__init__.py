"""What is run: the inputs of every form (the fixed lists and the searches) and the contract they stay inside."""
