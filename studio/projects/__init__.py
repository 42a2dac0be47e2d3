"""Project files and the services the studio's pages call: workspace, export, try-it."""
