"""What runs leave: the run store, reporters and the run viewer."""
