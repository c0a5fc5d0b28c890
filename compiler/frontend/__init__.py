"""The front end: load a torch.export archive, decompose it, import it into the dataflow dialect."""
