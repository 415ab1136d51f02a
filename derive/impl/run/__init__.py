"""Running the code under test: the child process, its calling conventions and Triton's interpreter."""
