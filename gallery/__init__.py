"""The dali-gallery app: gallery view, sample images, CLI and Voila launcher."""
